# The train-controller image that controller/install/deployment.yaml runs
# (ghcr.io/trainforge/train-controller). Build from the repository root:
#   docker build -t ghcr.io/trainforge/train-controller:0.1.0 .
# Two stages: the wheel is built with the build tools, the runtime gets only the wheel and
# its runtime dependencies (no compiler, no test extras), and runs as a non-root user, as
# the Deployment's securityContext (runAsNonRoot) requires.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY schemas schemas
COPY compiler compiler
COPY overlays overlays
COPY controller controller
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels \
    && useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin train-controller
USER 65532:65532
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
ENTRYPOINT ["train-controller"]
