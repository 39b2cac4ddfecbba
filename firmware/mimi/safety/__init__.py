# safety layer: breakers, audit log, roles and tool policy, budgets; console code is imported when typed


def console_command(module_name, handler, owner):
    """A console handler that imports mimi.safety.<module_name> at its first use and runs
    handler(owner, *args) from it."""

    async def run(*args):
        module = __import__("mimi.safety." + module_name, None, None, ["_"])
        return await getattr(module, handler)(owner, *args)

    return run
