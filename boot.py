# Runs first at every boot; kept minimal: everything else starts from main.py.
import gc

gc.collect()
