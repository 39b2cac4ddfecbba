# Safety from the outside: a looping acting tool trips the circuit breaker; audit_tail shows the calls, masked.
import textwrap

from host_sim.fake_anthropic import text, tool_use

SECRET = "hunter2-very-secret-value"

DOOR = '''
name = "open_door"
description = "Unlock the front door with a code."
schema = {"type": "object", "properties": {"door": {"type": "string"}, "pin_password": {"type": "string"}},
          "required": ["door"]}
acting = True

def run(input):
    return "opened " + input["door"]
'''


def test_the_fourth_identical_acting_call_is_refused_and_audit_tail_masks_secrets(flash, device, fake):
    folder = flash / "tools"
    folder.mkdir(parents=True)
    (folder / "tool_door.py").write_text(textwrap.dedent(DOOR))
    device.restart()  # tools are discovered at boot
    call = {"door": "front", "pin_password": SECRET}
    fake.script(*[tool_use("open_door", call) for _ in range(4)], text("The door keeps failing; I stopped."))
    assert "I stopped." in device.command("chat open the door", timeout=60)
    requests = fake.wait_requests(5)
    results = [r["body"]["messages"][-1]["content"][0] for r in requests[1:]]
    assert [(r["content"], r["is_error"]) for r in results[:3]] == [("opened front", False)] * 3
    assert results[3]["is_error"] is True
    assert results[3]["content"] == ("circuit breaker open for open_door: the same call ran 3 times in 10 minutes; "
                                     "it closes after 30 quiet minutes")
    assert "safety: circuit breaker opened for open_door" in device.output
    tail = device.command("audit_tail 3")
    lines = [line for line in tail.splitlines() if "open_door" in line]
    assert len(lines) == 3 and SECRET not in tail
    assert "cli:console open_door ok" in lines[0] and "FAILED" in lines[2] and "circuit breaker open" in lines[2]
    assert '"pin_password": "****"' in lines[0]
    assert SECRET not in "".join(p.read_text() for p in (flash / "data" / "audit").iterdir())
