"""Airflow sensors: waiting for a ResourceSync Source to change."""
