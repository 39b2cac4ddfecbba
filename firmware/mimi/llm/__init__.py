# llm layer: the model clients (Claude's Messages API, OpenAI-compatible chat), model profiles and their chain.
# The console commands (channels/commands.py add_lines), their code (llm/commands.py) imported when typed.
# What of this package loads late and may be let go (mimi/heap.py), with the scope that uses it: the clients' code,
# loaded for a model call (on a tight heap let go after it; a board with PSRAM keeps it).
LET_GO = ("body:call claude:call stream:call sse:call claude_tools:call file_pieces:call retry:call openai_chat:call "
          "openai_stream:call openai_request:call window:call citations:call")
COMMANDS = (
    "\nllm_list\tllm_list\t0\t0\tthe model profiles, the chain and the profile of each job"
    "\tmimi.llm.commands:list_all(app)"
    "\nllm_add\tllm_add <name> <anthropic|openai> <url> <model> [key]\t4\t5\tadd or change a model profile, e.g. "
    "llm_add local openai http://192.168.1.20:11434/v1 qwen2.5:7b\tmimi.llm.commands:add(app)\t5"
    "\nllm_key\tllm_key <name> <key|off>\t2\t2\ta model profile's API key\tmimi.llm.commands:key(app)\t2"
    "\nllm_ctx\tllm_ctx <name> <tokens|default>\t2\t2\ta profile's context window, as its server has it: every "
    "request fits it\tmimi.llm.commands:ctx(app)"
    "\nllm_remove\tllm_remove <name>\t1\t1\tdelete a model profile\tmimi.llm.commands:remove(app)"
    "\nllm_use\tllm_use <name>[,<name>...]\t1\t1\tthe profiles the agent asks, first first (the next answers when "
    "one fails)\tmimi.llm.commands:use(app)"
    "\nllm_for\tllm_for <watcher|summary|heartbeat> <name|default>\t2\t2\tthe profile a job asks before the chain"
    "\tmimi.llm.commands:job(app)"
    "\nllm_price\tllm_price <name> <usd_per_mtok_in|off> [usd_per_mtok_out]\t2\t3\twhat a profile's tokens cost "
    "(usage, budget)\tmimi.llm.commands:price(app)"
    "\nllm_note\tllm_note on|off\t1\t1\ta reply from a profile other than the first says which answered"
    "\tmimi.llm.commands:note(app)"
    "\nbudget_fallback\tbudget_fallback on|off\t1\t1\tonce the day's budget is spent, a free profile answers"
    "\tmimi.llm.commands:fallback(app)"
    "\n"
)
