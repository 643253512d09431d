-- The model registry's database (docker-compose.yml's mlflow service): MLflow builds its schema here at
-- its first start. PostgreSQL's image runs this once, when it creates its data folder.
CREATE DATABASE mlflow;
