#!/bin/sh
# Joins the compose `cluster` profile's masters into one cluster, once: a cluster already formed is left alone.
# redis-cli --cluster create wants addresses, so the service names are resolved first.
set -eu
for n in "$@"; do
  until redis-cli -h "$n" ping >/dev/null 2>&1; do sleep 1; done
done
if redis-cli -h "$1" cluster info | grep -q '^cluster_state:ok'; then
  echo "cluster already formed"
  exit 0
fi
addrs=""
for n in "$@"; do addrs="$addrs $(getent hosts "$n" | awk '{print $1}'):6379"; done
# shellcheck disable=SC2086
redis-cli --cluster create $addrs --cluster-replicas 0 --cluster-yes
