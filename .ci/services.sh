# Starts and stops the local stand-ins the tests need (sourced by .ci/run; usable by hand too:
#   source .ci/services.sh && start_services   ...   stop_services).
#
# moto_server (SQS) on MOTO_URL (default http://127.0.0.1:5000) and Google's Pub/Sub emulator on
# PUBSUB_EMULATOR_HOST (default 127.0.0.1:8085). Idempotent: a service that already answers is left
# alone, and stop_services stops only what start_services started (each in its own process group,
# so the emulator's `java` child goes with its wrapper script).

SERVICES_STATE_DIR="${SERVICES_STATE_DIR:-/tmp/multicloud-webhooks-services}"
PUBSUB_EMULATOR_BIN="${PUBSUB_EMULATOR_BIN:-/usr/lib/google-cloud-sdk/platform/pubsub-emulator/bin/cloud-pubsub-emulator}"

_svc_moto_url() { echo "${MOTO_URL:-http://127.0.0.1:5000}"; }
_svc_pubsub_host() { echo "${PUBSUB_EMULATOR_HOST:-127.0.0.1:8085}"; }

# True when an HTTP server answers at $1 (any status).
_svc_answers() { curl -s -o /dev/null --max-time 2 "$1"; }

# _svc_wait NAME URL SECONDS: poll until it answers; fail (with the log) when it does not in time.
_svc_wait() {
  local name="$1" url="$2" limit="$3" i
  for ((i = 0; i < limit * 4; i++)); do
    _svc_answers "$url" && { echo "$name answers at $url"; return 0; }
    sleep 0.25
  done
  echo "!!! $name did not answer at $url within ${limit}s; log: $SERVICES_STATE_DIR/$name.log" >&2
  tail -n 20 "$SERVICES_STATE_DIR/$name.log" >&2 2>/dev/null || true
  return 1
}

# _svc_spawn NAME CMD...: start CMD in its own session (process group) and remember its id.
_svc_spawn() {
  local name="$1"; shift
  mkdir -p "$SERVICES_STATE_DIR"
  setsid "$@" >"$SERVICES_STATE_DIR/$name.log" 2>&1 < /dev/null &
  echo $! > "$SERVICES_STATE_DIR/$name.pid"
}

start_services() {
  local moto pubsub hostport
  moto="$(_svc_moto_url)"; pubsub="$(_svc_pubsub_host)"
  if _svc_answers "$moto"; then
    echo "moto already answers at $moto (left as is)"
  else
    hostport="${moto#http://}"; hostport="${hostport%%/*}"
    _svc_spawn moto moto_server -H "${hostport%%:*}" -p "${hostport##*:}"
    _svc_wait moto "$moto" 30 || return 1
  fi
  if _svc_answers "http://$pubsub"; then
    echo "Pub/Sub emulator already answers at $pubsub (left as is)"
  else
    _svc_spawn pubsub "$PUBSUB_EMULATOR_BIN" --host="${pubsub%%:*}" --port="${pubsub##*:}"
    _svc_wait pubsub "http://$pubsub" 60 || return 1
  fi
  export MOTO_URL="$moto" PUBSUB_EMULATOR_HOST="$pubsub"
}

stop_services() {
  local name pid
  for name in pubsub moto; do
    [ -f "$SERVICES_STATE_DIR/$name.pid" ] || continue
    pid="$(cat "$SERVICES_STATE_DIR/$name.pid")"
    # setsid made $pid a group leader: signal the whole group (the wrapper and its java child).
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM -- "-$pid" 2>/dev/null || true
      for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$SERVICES_STATE_DIR/$name.pid"
    echo "stopped $name"
  done
}
