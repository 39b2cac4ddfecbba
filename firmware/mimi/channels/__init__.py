# channels layer
