FROM python:3.11-slim

# libopus: discord.py voice; ffmpeg is bundled with PyAV (faster-whisper)
RUN apt-get update && apt-get install -y --no-install-recommends libopus0 \
    && rm -rf /var/lib/apt/lists/*

# The data dir exists in the image, owned by the bot's user: a new named volume mounted there takes its owner
# (a path the image lacks is created root-owned, and the bot could not write its spool).
RUN useradd --create-home lorekeeper && install -d -o lorekeeper -g lorekeeper /home/lorekeeper/data
WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot bot
COPY cogs cogs
COPY memory memory
COPY campaigns campaigns
COPY migrations migrations
RUN pip install --no-cache-dir .

USER lorekeeper
ENV LOREKEEPER_DATA_DIR=/home/lorekeeper/data
# DATABASE_URL and DISCORD_TOKEN come from the environment (see docker-compose.yml)
CMD ["lorekeeper", "run"]
