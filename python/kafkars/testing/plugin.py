"""pytest plugin: fixtures that hand a test a running kafkars broker."""
