# What each setting is for, one row a line: "\n" namespace, key, the words the web app's Settings view shows
# beside it, tab-separated (the settings table holds the rest of the row). Apart from that table because only the
# view asks (settings.SETTINGS loads it, the view's scope lets it go): a .mpy module's constants are heap for as
# long as it is loaded, 5.2 KB here (a ROMFS image's and a frozen build's stay in flash).
# tests/unit/test_config.py: a note for every setting, and none for a setting that does not exist.
from mimi import table

NOTES = (
    b'\nwifi_config\tssid\tWiFi network name'
    b'\nwifi_config\tpassword\tWiFi password (wifi_set)'
    b'\nwifi_config\tsetup_port\tTCP port of the setup page on the MimiClaw-XXXX access point'
    b'\ntg_config\tbot_token\tTelegram bot token from @BotFather (set_tg_token)'
    b'\ntg_config\tapi_base\tTelegram Bot API base URL'
    b'\ntg_config\tallowlist\tTelegram user ids allowed to chat, comma-separated'
    b'\nllm_config\tapi_key\tAnthropic API key (set_api_key)'
    b'\nllm_config\tmodel\tClaude model name'
    b'\nllm_config\tapi_base\tAnthropic API base URL'
    b'\nllm_config\tmax_tokens\tMost tokens in one reply'
    b'\nllm_config\tchain\t'
    b'Model profiles the agent asks, first first, comma-separated: the next answers when one fails (llm_use)'
    b'\nllm_config\tfor_watcher\tProfile that judges watcher readings (llm_for); empty: the chain'
    b'\nllm_config\tfor_summary\tProfile that writes memory summaries (llm_for); empty: the chain'
    b'\nllm_config\tfor_heartbeat\tProfile of the heartbeat checks (llm_for); empty: the chain'
    b'\nllm_config\tprice\t'
    b"The claude profile's price, USD per million tokens in/out, e.g. 3/15 (llm_price); empty: the list price"
    b"\nllm_config\tnote\t1: a reply from a profile other than the chain's first says so (llm_note)"
    b'\nllm_config\tfallback\t'
    b"1: once the day's token budget is spent, a free profile of the chain answers (budget_fallback)"
    b'\nllm_profiles\tp1\tModel profile: name, anthropic|openai, base URL, model, [price in/out], [window tokens] '
    b'(llm_add, llm_price, llm_ctx)'
    b'\nllm_profiles\tp2\tModel profile (llm_add)'
    b'\nllm_profiles\tp3\tModel profile (llm_add)'
    b'\nllm_profiles\tp4\tModel profile (llm_add)'
    b'\nllm_profiles\tp5\tModel profile (llm_add)'
    b'\nllm_profiles\tp6\tModel profile (llm_add)'
    b'\nllm_profiles\tk1\tAPI key of model profile p1 (llm_key)'
    b'\nllm_profiles\tk2\tAPI key of model profile p2 (llm_key)'
    b'\nllm_profiles\tk3\tAPI key of model profile p3 (llm_key)'
    b'\nllm_profiles\tk4\tAPI key of model profile p4 (llm_key)'
    b'\nllm_profiles\tk5\tAPI key of model profile p5 (llm_key)'
    b'\nllm_profiles\tk6\tAPI key of model profile p6 (llm_key)'
    b'\ngw_config\tws_port\tWebSocket gateway TCP port'
    b'\nagent_config\theartbeat_s\tSeconds between heartbeat checks of HEARTBEAT.md (0 = off, at least 60)'
    b'\ntool_config\tgpio_allow\tGPIO pins the agent may read and write, comma-separated (gpio_allow <pin>)'
    b'\nweb_config\tsearch_key\tWeb search API key, Brave Search or Tavily (set_search_key <key>)'
    b'\nweb_config\tsearch_provider\tWeb search provider: brave or tavily'
    b"\nweb_config\tsearch_api\tWeb search endpoint URL; empty: the provider's own"
    b'\nweb_config\tsearch_mode\t'
    b"Who searches the web: server (Claude's own), device (web_search with your key) or off; empty:"
    b' device when a search key is set, else server (set_search)'
    b'\nweb_config\tsearch_max_uses\tSearches (and fetches) Claude may run per request, server mode'
    b"\nweb_config\tserver_fetch\t1: Claude's own web_fetch (beta) instead of the device's, server mode"
    b'\nsafety_config\tday_searches\t'
    b"Claude's server web searches per day (0 = no limit); past it, requests offer no web search"
    b'\nmedia_config\tphoto_max_bytes\t'
    b'Largest photo size (bytes) taken from Telegram; a smaller size of the photo is picked to fit'
    b'\nmedia_config\tphoto_max_px\tLongest side (pixels) of a photo sent to Claude'
    b'\nmedia_config\tfile_max_bytes\tLargest PDF or text file sent to Claude'
    b'\nweb_config\tweather_api\tOpen-Meteo forecast API base URL'
    b'\nweb_config\tgeocode_api\tOpen-Meteo geocoding API base URL'
    b'\ngw_config\tws_token\t'
    b'Token a web chat client must present (set_ws_token); off: none needed, clients act as ws_open_role'
    b'\ngw_config\tws_role\tRole of web chat clients that present the token: observer, operator or owner (ws_role)'
    b'\ngw_config\tws_open_role\t'
    b'Role of web chat clients while the token is off: observer, operator or owner (ws_open_role)'
    b'\ngw_config\thosts\t'
    b'Other names the board answers to (Host), comma-separated; its IP, localhost and <hostname>.local always'
    b'\ngw_config\torigins\t'
    b'Other web pages (origins, e.g. http://192.168.1.5:3000) that may use the web chat and /mcp, comma-separated'
    b'\nsafety_config\tcalls\tIdentical acting tool calls allowed per window'
    b'\nsafety_config\twindow_s\tSeconds in which repeated identical calls are counted'
    b'\nsafety_config\tquiet_s\tQuiet seconds after which an open circuit breaker closes'
    b'\ntg_config\troles\t'
    b'Roles of allowlisted Telegram users: id=owner|operator|observer, comma-separated (tg_allow <id> <role>)'
    b'\ntool_config\tpolicy\t'
    b'Autonomy levels changed from their defaults: tool=autonomous|report|confirm|blocked (tool_policy)'
    b'\nsafety_config\tconfirm_s\tSeconds a confirmation question waits for Approve before it counts as Deny'
    b'\nsafety_config\tuser_per_min\tMessages one user may send per minute'
    b'\nsafety_config\tllm_per_hour\tLLM calls the device may make per hour'
    b'\nsafety_config\tday_tokens\t'
    b"Tokens the device may use per day, all kinds counted, a free model profile's never (0 = no limit)"
    b'\nllm_config\twatch_model\t'
    b"Claude model that judges watcher readings when claude does (set_watch_model); empty: the profile's"
    b'\nsafety_config\twatch_evals_min\tWatcher evaluations allowed per minute, all watchers'
    b'\nsafety_config\twatch_acts_hour\tWatcher actions (tool calls and notices) allowed per hour, all watchers'
    b'\nsafety_config\trule_fires_hour\t'
    b'Times one local rule may fire per hour; past it the rule is paused and the owner told'
    b'\nmqtt_config\thost\tMQTT broker host name or IP; empty: MQTT off (mqtt_set)'
    b'\nmqtt_config\tport\tMQTT broker port; 0: 1883, or 8883 with TLS'
    b'\nmqtt_config\tuser\tMQTT user name (mqtt_auth)'
    b'\nmqtt_config\tpassword\tMQTT password (mqtt_auth)'
    b"\nmqtt_config\ttls\t1: MQTT over TLS, the broker's certificate checked (mqtt_tls)"
    b"\nmqtt_config\tdevice_id\tThis board's name on MQTT (topics mimi/<id>/...); empty: mimi-<chip id> (mqtt_id)"
    b'\nmqtt_config\trole\tRole of messages arriving on MQTT: observer, operator or owner (mqtt_role)'
    b'\nmqtt_config\tdiscovery\t1: announce the board to Home Assistant (mqtt_discovery)'
    b"\nmqtt_config\tha_prefix\tHome Assistant's discovery prefix"
    b'\nmqtt_config\tpublish_allow\t'
    b'Topics (filters with + and #) the mqtt_publish tool may publish to, comma-separated (mqtt_allow)'
    b'\nmqtt_config\tkeepalive\tSeconds between MQTT keep-alive pings'
    b'\nmx_config\thomeserver\tMatrix homeserver URL the board is logged in to (matrix_set)'
    b'\nmx_config\tuser\tThe board\'s Matrix user id, @name:server (matrix_set)'
    b'\nmx_config\ttoken\tThe board\'s Matrix access token (matrix_set keeps it; never the password)'
    b'\nmx_config\tdevice\tThe device id of the board\'s Matrix login'
    b'\nmx_config\tallow\tMatrix users allowed to chat, with roles: @user:server=role,... (matrix_allow)'
    b'\nmx_config\tdirect\tMatrix rooms that are direct chats with one allowed user: room=@user,...'
    b'\ndc_config\ttoken\tDiscord bot token from the developer portal (discord_set)'
    b'\ndc_config\tapi_base\tDiscord REST API base URL'
    b'\ndc_config\tallow\tDiscord user ids allowed to chat, with roles: id=role,... (discord_allow)'
    b'\ndc_config\tdirect\tDiscord DM channels and their user: channel=user,...'
    b'\ndc_config\tcontent\t1: ask for the privileged MESSAGE_CONTENT intent (turn it on in the portal first)'
    b'\nmcp_config\ttoken\t'
    b"Token MCP clients present (Authorization: Bearer); empty: the web chat's token (set_mcp_token)"
    b"\nmcp_config\trole\tRole of MCP clients' tool calls: observer, operator or owner (mcp_role)"
    b'\nmcp_config\ttimeout_s\tSeconds one call to an MCP server may take'
    b'\nvoice_config\tstt_url\tSpeech-to-text service (OpenAI-compatible) for voice notes (set_stt)'
    b'\nvoice_config\tstt_model\tSpeech-to-text model'
    b'\nvoice_config\tstt_key\tSpeech-to-text API key (set_stt_key)'
    b'\nvoice_config\treply\tVoice replies on Telegram: off, on or auto (to a voice note; set_voice)'
    b'\nvoice_config\ttts_url\tText-to-speech service (set_tts); empty: the speech-to-text one'
    b'\nvoice_config\ttts_model\tText-to-speech model'
    b'\nvoice_config\ttts_voice\tText-to-speech voice'
    b'\nvoice_config\ttts_key\tText-to-speech API key (set_tts_key); empty: the speech-to-text key'
    b'\nvoice_config\ttimeout_s\tSeconds a speech service may think before it answers'
    b'\nvoice_config\tmax_bytes\tLargest voice note taken (a minute: 100-300 KB)'
    b'\nvoice_config\tstt_cents_hour\tSpeech-to-text price, US cents an hour of audio'
    b'\nvoice_config\ttts_cents_mchar\tText-to-speech price, US cents a million characters'
    b'\nsafety_config\tday_audio_s\tSeconds of voice notes transcribed per day (0 = no limit)'
    b'\nsafety_config\tday_tts_chars\tCharacters spoken per day (0 = no limit)'
    b'\nsystem\tsmall_board\t'
    b'Small-board mode (no PSRAM): on, off, or auto (on when the heap at boot is under 512 KB)'
    b"\n"
)


def of(ns, key):
    """The note of ns.key, or "" for a setting without one."""
    at = table.find(NOTES, ns, key)
    return "" if at < 0 else str(table.field(NOTES, at), "utf-8")
