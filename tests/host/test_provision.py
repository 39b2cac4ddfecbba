# `make provision`: an NVS image the firmware reads with get_blob, built without echoing secrets.
import os
import subprocess
import sys

from tests.nvs_image import TYPE_BLOB_DATA, TYPE_BLOB_IDX, blobs, format_problems, nvs_entries
from tools import partition_table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROVISION = [sys.executable, os.path.join(ROOT, "tools", "provision.py")]

WIFI_PASSWORD = "hunter2-wifi-pass"
BOT_TOKEN = "123456789:AAFakeBotTokenForTheProvisionTest"
API_KEY = "sk-ant-api03-provision-test-key-0123456789"
SAMPLE = """# a comment line
namespace,key,value
wifi_config,ssid,Home Network
wifi_config,password,{}
tg_config,bot_token,{}
tg_config,allowlist,"123, 456"
llm_config,api_key,{}
llm_config,model,claude-test-model
llm_config,max_tokens,2048
gw_config,ws_token,
""".format(WIFI_PASSWORD, BOT_TOKEN, API_KEY)
SECRETS = (WIFI_PASSWORD, BOT_TOKEN, API_KEY)


def provision(tmp_path, text):
    source = tmp_path / "provision.csv"
    source.write_text(text)
    out = tmp_path / "nvs.bin"
    result = subprocess.run(PROVISION + ["--csv", str(source), "--out", str(out)], cwd=ROOT,
                            capture_output=True, text=True)
    return result, out


def test_image_holds_every_setting_as_a_blob(tmp_path):
    result, out = provision(tmp_path, SAMPLE)
    assert result.returncode == 0, result.stderr
    nvs = partition_table.find(partition_table.read(os.path.join(ROOT, "partitions.csv")), "nvs")
    image = out.read_bytes()
    assert len(image) == nvs.size
    assert blobs(image) == {
        ("wifi_config", "ssid"): b"Home Network",
        ("wifi_config", "password"): WIFI_PASSWORD.encode(),
        ("tg_config", "bot_token"): BOT_TOKEN.encode(),
        ("tg_config", "allowlist"): b"123,456",  # normalised as config.set() would
        ("llm_config", "api_key"): API_KEY.encode(),
        ("llm_config", "model"): b"claude-test-model",
        ("llm_config", "max_tokens"): b"2048",
    }
    kinds = {kind for ns, kind, key, payload in nvs_entries(image) if ns != 0}
    assert kinds == {TYPE_BLOB_DATA, TYPE_BLOB_IDX}  # no string entries: get_blob would miss them
    assert format_problems(image) == []
    assert "write-flash {:#x} ".format(nvs.offset) in result.stdout


def test_secrets_never_reach_the_console(tmp_path):
    result, _ = provision(tmp_path, SAMPLE)
    console = result.stdout + result.stderr
    assert result.returncode == 0
    for secret in SECRETS:
        assert secret not in console
        assert secret.encode().hex() not in console


def test_a_bad_value_fails_without_quoting_it(tmp_path):
    long_key = "sk-ant-" + "x" * 600
    result, out = provision(tmp_path, "namespace,key,value\nllm_config,api_key," + long_key + "\n")
    assert result.returncode != 0
    assert "llm_config.api_key is too long" in result.stderr
    assert "x" * 20 not in result.stdout + result.stderr
    assert not out.exists()


def test_a_token_too_short_or_not_url_safe_is_refused_as_the_console_refuses_it(tmp_path):
    for ns, token in (("gw_config", "Qx9"), ("mcp_config", "ZZq"), ("gw_config", "has space&amp")):
        result, out = provision(tmp_path, "namespace,key,value\n{},{},{}\n".format(
            ns, "ws_token" if ns == "gw_config" else "token", token))
        assert result.returncode != 0 and not out.exists()
        assert "line 2" in result.stderr and "8 to 128" in result.stderr and token not in result.stderr


def test_an_unknown_setting_names_the_valid_ones(tmp_path):
    result, _ = provision(tmp_path, "# settings\nnamespace,key,value\nllm_config,apikey,x\n")
    assert result.returncode != 0
    assert "line 3" in result.stderr and "llm_config.api_key" in result.stderr


def test_a_missing_csv_says_where_to_start(tmp_path):
    result = subprocess.run(PROVISION + ["--csv", str(tmp_path / "none.csv")], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert "provision.example.csv" in result.stderr


def test_the_template_provisions(tmp_path):
    with open(os.path.join(ROOT, "provision.example.csv")) as f:
        result, out = provision(tmp_path, f.read())
    assert result.returncode == 0, result.stderr
    assert ("wifi_config", "ssid") in blobs(out.read_bytes())
