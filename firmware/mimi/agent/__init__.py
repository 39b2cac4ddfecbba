# agent layer
