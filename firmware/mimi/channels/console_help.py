# The console's help and config_show, by group (imported when one is typed, let go after it): the groups are str
# constants, so they stay in the image (flash on a ROMFS board).
from mimi import table
from mimi.platform import const

_WIDTH = const(100)  # columns of help's list of names

# The commands by group, as docs/console.md has them, a row each: the words `help <group>` takes (the first one
# shown), the heading, and the names (one ending in "_" stands for every name it starts). The first group that
# has a name takes it; a command no group names (an owner's rule command, a layer's new one) goes under "other".
_COMMAND_GROUPS = (
    "\nstart\tStart and the board\thelp status chat restart heap_info"
    "\nwifi\tWiFi\twifi_"
    "\nmodels llm claude\tClaude and other models\tset_api_key set_model set_max_tokens set_llm_api set_watch_model "
    "llm_ budget_fallback"
    "\ntelegram\tTelegram\tset_tg_ tg_"
    "\nmatrix\tMatrix\tmatrix_"
    "\ndiscord\tDiscord\tdiscord_"
    "\nweb gateway mcp\tWeb chat and MCP\tws_ set_ws_ mcp_ set_mcp_token"
    "\ntools\tTools\ttool_list tool_exec gpio_ set_search set_search_key"
    "\nwatchers rules cron\tWatchers, rules and schedules\twatch_ cron_ heartbeat_"
    "\nmemory\tMemory, sessions and skills\tmemory_ session_ skill_"
    "\nsafety audit\tSafety, budgets and the audit log\ttool_policy usage budget audit_"
    "\nmqtt\tMQTT and Home Assistant\tmqtt_"
    "\nvoice\tVoice\tset_stt set_stt_key set_tts set_tts_key set_voice voice_"
    "\nsettings config\tEvery setting\tconfig_"
    "\nupdates ota\tUpdates\tota ota_bundle"
    "\nother\tOther commands\t"
)

# config_show's headings, as the web app's Settings view has them (www/views.js GROUPS), a row each: the word
# `config_show <group>` takes, the heading, the namespaces (none: every namespace no other row names).
_SETTING_GROUPS = (
    "\nwifi\tWiFi\twifi_config"
    "\ntelegram\tTelegram\ttg_config"
    "\nmodels\tModels\tllm_config llm_profiles"
    "\nmatrix\tMatrix\tmx_config"
    "\ndiscord\tDiscord\tdc_config"
    "\nweb\tWeb chat and MCP\tgw_config mcp_config"
    "\nsearch\tWeb search and web services\tweb_config"
    "\nmqtt\tMQTT and Home Assistant\tmqtt_config"
    "\nvoice\tVoice\tvoice_config"
    "\nsafety\tSafety, budgets and limits\tsafety_config"
    "\ntools\tTools and heartbeat\ttool_config agent_config"
    "\nmedia\tPhotos and files\tmedia_config"
    "\nboard\tBoard\tsystem"
    "\nother\tOther\t"
)


def _groups(text):
    """[words, heading, names] of each row."""
    return [table.fields(text, at) for at in table.rows(text)]


def _out(app, text):
    app.console.commands.out(text)


def _group_of(name, groups):
    for group in groups:
        for word in group[2].split():
            if name == word or (word[-1] == "_" and name.startswith(word)):
                return group
    return groups[-1]


async def help(app, what=None):
    """help: the groups and their commands' names; help <group>: its commands' usage and purpose; help
    <command>: that command's."""
    commands = app.console.commands
    names = sorted(commands.names())
    groups = _groups(_COMMAND_GROUPS)
    if what is None:
        _out(app, "Commands by group (help <group> or help <command> tells more):")
        for group in groups:
            word = group[0].split()[0]
            line = "  {:<9}".format(word)
            found = [name for name in names if _group_of(name, groups) is group]
            for name in found:
                if len(line) + len(name) + 1 > _WIDTH and line.strip() != word:
                    _out(app, line)
                    line = " " * 11
                line += " " + name
            if found:
                _out(app, line)
        return
    what = what.lower()
    if commands.entry(what) is not None:
        _usage_lines(app, [what])
        return
    for group in groups:
        if what in group[0].split():
            _out(app, group[1] + ":")
            _usage_lines(app, [name for name in names if _group_of(name, groups) is group])
            return
    from mimi.channels.cmdline import nearest

    near = nearest(what, names)
    raise ValueError("no command or group '{}'{}; the groups: {}".format(
        what, "; did you mean {}?".format(" or ".join(near[:3])) if near else "",
        ", ".join(group[0].split()[0] for group in groups)))


def _usage_lines(app, names):
    entries = [app.console.commands.entry(name) for name in names]
    width = max([len(entry[1]) for entry in entries] or [0])
    for entry in entries:
        _out(app, "  {}  {}".format(entry[1] + " " * (width - len(entry[1])), entry[4]))


async def config_show(app, what=None):
    """config_show: every setting under its heading; config_show <group> (or a namespace): one heading's."""
    groups = _groups(_SETTING_GROUPS)
    known = " ".join(group[2] for group in groups).split()
    if what is not None:
        what = what.lower()
        groups = [group for group in groups if group[0] == what or what in group[2].split()]
        if not groups:
            raise ValueError("no settings group '{}'; the groups: {} (or a namespace, as wifi_config)".format(
                what, ", ".join(group[0] for group in _groups(_SETTING_GROUPS)[:-1])))
    rows = app.config.shown()
    for group in groups:
        spaces = group[2].split()
        found = [row for row in rows if (row[0] in spaces if spaces else row[0] not in known)]
        if found:
            _out(app, "{} ({}):".format(group[1], group[0]))
            for ns, key, shown in found:
                _out(app, "  {}.{} = {}".format(ns, key, shown))
