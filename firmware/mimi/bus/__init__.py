# bus layer
