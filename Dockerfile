FROM python:3.11-slim
WORKDIR /srv
COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY indexer ./indexer
COPY migrations ./migrations
COPY contam ./contam
RUN pip install --no-cache-dir .
EXPOSE 8000
CMD ["contam", "serve", "--host", "0.0.0.0", "--port", "8000"]
