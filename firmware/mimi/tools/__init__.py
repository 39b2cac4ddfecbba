# tools layer: what the agent can do besides talking
