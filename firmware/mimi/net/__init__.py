# net layer
