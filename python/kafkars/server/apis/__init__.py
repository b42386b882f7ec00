"""One module per group of Kafka APIs; each handler takes (apis, request) and returns the
response as a dict shaped like the API's response message, or None when it answers later."""
