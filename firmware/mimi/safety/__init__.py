# safety layer: breakers, audit log, roles and tool policy, budgets; console code is imported when typed
