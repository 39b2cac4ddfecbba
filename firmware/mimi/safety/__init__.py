# safety layer: breakers, audit log, roles and tool policy, budgets; console code is imported when typed
# What of this package loads late and may be let go (mimi/heap.py), with the scopes that use it: the masking of
# outside text, loaded at a tool call or a failed model call.
LET_GO = "masking:tool,call"
DEMO_MODEL = "offline-demo"  # make sim's stand-in brain (host_sim/demo_brain.py): counted, never billed nor budgeted
NS = "safety_config"  # the settings of the whole layer (settings/): breaker, budgets, confirmations, watchers
