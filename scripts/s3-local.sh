#!/usr/bin/env bash
# A local S3 server for the fetcher, its bucket created: versitygw, the S3
# gateway the fetcher's tests run (the version tools/go.mod pins, built
# with `go tool` into the Go build cache), its posix backend serving a
# directory. Run it with `make s3-local` in a terminal of its own; Ctrl-C
# stops it, the directory (and so the bucket's objects) stays.
#
# S3_LOCAL_ADDR (default 127.0.0.1:7070), S3_LOCAL_DIR (data/s3) and
# S3_LOCAL_BUCKET (products) change where it listens, what it serves and
# the bucket it creates. The keys are a laptop's, never a real store's.
set -euo pipefail
cd "$(dirname "$0")/.."
addr=${S3_LOCAL_ADDR:-127.0.0.1:7070}
dir=${S3_LOCAL_DIR:-data/s3}
bucket=${S3_LOCAL_BUCKET:-products}
access=dev-access
secret=dev-secret-change-me
region=us-east-1
# Beside the directory, and not named with its name as a prefix:
# versitygw refuses a side directory its root's path starts.
meta=$(dirname "$dir")/.$(basename "$dir")-meta
mkdir -p "$dir" "$meta"
bin=$(go tool -modfile=tools/go.mod -n versitygw)
log=$dir.log
# Only what it needs in its environment: versitygw also reads generic names
# (LOGFILE, WEBHOOK) and many VGW_* that a shell may hold. The metadata goes
# to a side directory, so that a file system without user xattrs serves too.
env -i PATH="$PATH" HOME="${HOME:-/tmp}" ROOT_ACCESS_KEY_ID=$access ROOT_SECRET_ACCESS_KEY=$secret \
  "$bin" --port "$addr" --region "$region" --health /-health --quiet posix --sidecar "$meta" "$dir" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true' EXIT
trap 'exit 0' INT TERM
for _ in $(seq 300); do
  curl -fs "http://$addr/-health" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { echo "versitygw ended at start:" >&2; cat "$log" >&2; exit 1; }
  sleep 0.1
done
curl -fs "http://$addr/-health" >/dev/null || { echo "versitygw not answering on $addr:" >&2; cat "$log" >&2; exit 1; }
# The bucket, through the S3 API (curl signs the request): 200 made, 409
# already there (a second run on the same directory).
# The empty body's SHA-256, which S3 wants named.
code=$(curl -s -o "$dir.create" -w '%{http_code}' --aws-sigv4 "aws:amz:$region:s3" --user "$access:$secret" \
  -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" -X PUT "http://$addr/$bucket")
case $code in
  200 | 409) ;;
  *) echo "creating the bucket $bucket: HTTP $code" >&2; cat "$dir.create" >&2; exit 1 ;;
esac
rm -f "$dir.create"
cat <<EOT
versitygw serving $dir on http://$addr, bucket $bucket ready (log: $log); for the fetcher:
  export AWS_ENDPOINT_URL_S3=http://$addr
  export AWS_ACCESS_KEY_ID=$access
  export AWS_SECRET_ACCESS_KEY=$secret
  export AWS_REGION=$region
  export FETCH_TARGET=s3://$bucket/cdse
EOT
wait "$pid"
