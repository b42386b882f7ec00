"""Authentication: SASL mechanisms (PLAIN, SCRAM) and the credentials behind them."""
