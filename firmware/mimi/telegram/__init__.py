# telegram layer
