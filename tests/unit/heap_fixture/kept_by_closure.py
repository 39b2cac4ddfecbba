# Declared with the call scope, and kept at the top level of holder_of_closure as a closure.


def made(n):
    def add(x):
        return x + n

    return add
