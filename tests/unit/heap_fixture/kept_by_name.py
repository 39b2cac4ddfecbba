# Declared with the call scope, and kept at the top level of holder_of_name.


class Refused(OSError):
    pass
