"""Airflow triggers: waiting on a ResourceSync Source without holding a worker slot."""
