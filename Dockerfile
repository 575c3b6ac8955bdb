# The signing loops are a C extension (native/): built in a stage with a compiler, installed as
# a wheel into a slim image without one.
FROM python:3.11-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md alembic.ini ./
COPY native ./native
COPY app ./app
COPY indexer ./indexer
COPY migrations ./migrations
COPY contam ./contam
RUN pip wheel --no-cache-dir --no-deps -w /wheels .

# Alone (docker-compose.yml runs it with PostgreSQL): the server listens beyond loopback, so it
# needs API keys, and its SQLite file lives in the volume /data:
#   docker build -t contam . && docker run -e CONTAM_API_KEYS=$(openssl rand -hex 16) \
#     -v contam-data:/data -p 127.0.0.1:8000:8000 contam
FROM python:3.11-slim
WORKDIR /srv
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
ENV CONTAM_DATABASE_URL=sqlite:////data/contam.db
VOLUME /data
EXPOSE 8000
CMD ["contam", "serve", "--host", "0.0.0.0", "--port", "8000"]
