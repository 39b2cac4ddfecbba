# Not declared: it keeps a closure made by kept_by_closure at its top level, and nothing else of it.


def _made():
    from heap_fixture.kept_by_closure import made

    return made(2)


add_two = _made()
