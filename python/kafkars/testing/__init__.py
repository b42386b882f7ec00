"""Helpers for testing against kafkars."""
