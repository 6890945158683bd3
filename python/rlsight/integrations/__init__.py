"""Integrations of rlsight's producer client with training frameworks, through their own extension points."""
