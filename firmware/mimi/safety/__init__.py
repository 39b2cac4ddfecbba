# safety layer: breakers, audit log, roles and tool policy, budgets; console code is imported when typed
NS = "safety_config"  # the settings of the whole layer (config.py): breaker, budgets, confirmations, watchers
