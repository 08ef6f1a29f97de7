"""Airflow hooks: connections to ResourceSync Sources."""
