# The `tool_policy [tool] [level]` console command (imported when it is typed).
from mimi.safety.policy import level_of, set_level, tier_of


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
