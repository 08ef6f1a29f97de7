"""ResourceSync itself: pure, no network and no Airflow. Bytes and iterators in, objects out."""
