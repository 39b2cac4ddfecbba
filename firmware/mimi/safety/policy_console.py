# The `tool_policy [tool] [level]` console command (imported when it is typed).
from mimi.safety.policy import _KEY, _NS, LEVELS, default_level, level_of, parse_levels, tier_of


def encode_levels(levels):
    return ",".join("{}={}".format(name, levels[name]) for name in sorted(levels))


def set_level(config, name, level, tool=None):
    """Store a tool's level (ValueError for an unknown level); a tool's default is not stored."""
    if level not in LEVELS:
        raise ValueError("level must be one of {}, not {!r}".format(", ".join(LEVELS), level))
    levels = parse_levels(config.get(_NS, _KEY))
    if level == default_level(name, tool):
        levels.pop(name, None)
    else:
        levels[name] = level
    config.set(_NS, _KEY, encode_levels(levels))


async def tool_policy(policy, name=None, level=None):
    config, registry = policy.app.config, policy.app.registry
    if name is None:
        print("  {:<18} {:<9} {}".format("tool", "tier", "level"))
        for tool_name in sorted(registry.tools):
            tool = registry.tools[tool_name]
            print("  {:<18} {:<9} {}".format(tool_name, tier_of(tool_name, tool), level_of(config, tool_name, tool)))
        return
    if name not in registry.tools:
        raise ValueError("no tool named '{}' (tool_policy lists them)".format(name))
    tool = registry.tools[name]
    if level is None:
        print("{}: tier {}, level {}".format(name, tier_of(name, tool), level_of(config, name, tool)))
        return
    set_level(config, name, level, tool)
    print("{} is now {} (saved)".format(name, level))
