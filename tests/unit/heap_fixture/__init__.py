# Modules declared to heap.py for tests/unit/test_heap.py, names no other test imports: which of them is loaded
# depends on that test alone.
LET_GO = "in_call:call in_tool:tool in_both:call,tool at_boot:boot kept_by_name:call kept_by_closure:call"
