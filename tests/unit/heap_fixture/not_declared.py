# A module heap.py may let go (or, not_declared, never): its package's LET_GO says.
VALUE = 1
