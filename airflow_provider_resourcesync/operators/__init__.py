"""Airflow operators: baseline a ResourceSync Source into a mirror, combine shards, audit."""
