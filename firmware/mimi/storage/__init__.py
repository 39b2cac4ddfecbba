# storage layer
