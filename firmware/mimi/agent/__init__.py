# agent layer
# What of this package loads late and may be let go (mimi/heap.py), with the scope that uses it.
LET_GO = "consolidate:consolidation"
