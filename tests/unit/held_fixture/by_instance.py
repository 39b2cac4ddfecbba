from held_fixture.target import Session

session = Session()
del Session
