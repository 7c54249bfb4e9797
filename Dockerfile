# The train-controller image that controller/install/deployment.yaml runs
# (ghcr.io/trainforge/train-controller). Build from the repository root:
#   docker build -t ghcr.io/trainforge/train-controller:0.1.0 .
# Two stages: the wheel is built with the build tools, the runtime gets only the wheel and
# its runtime dependencies at exactly uv.lock's versions (pip --require-hashes; no
# compiler, no test extras), and runs as a non-root user, as the Deployment's
# securityContext (runAsNonRoot) requires. tests/install runs these same steps on the
# built wheel (the "locked" variant), since CI has no docker.
FROM python:3.11-slim AS build
# the uv pyproject.toml pins ([tool.uv] required-version); tests/install holds them equal
ARG UV_VERSION=0.13.9
RUN pip install --no-cache-dir "uv==${UV_VERSION}"
WORKDIR /src
COPY pyproject.toml uv.lock README.md ./
COPY schemas schemas
COPY foundation foundation
COPY compiler compiler
COPY overlays overlays
COPY controller controller
RUN mkdir /wheels \
    && uv export --frozen --no-dev --no-emit-project --no-header --quiet -o /wheels/requirements.txt \
    && pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --require-hashes -r /wheels/requirements.txt \
    && pip install --no-cache-dir --no-deps /wheels/*.whl && rm -rf /wheels \
    && useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin train-controller
USER 65532:65532
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
ENTRYPOINT ["train-controller"]
