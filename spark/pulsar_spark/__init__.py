"""PySpark data source over Pulsar topics, `pulsar sql`, Spark-on-K8s jobs."""
