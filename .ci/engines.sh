#!/usr/bin/env bash
# Installs and starts what the container tier's tests need, on a fresh Debian 12 host or a
# developer machine (idempotent: run it again at will):
#   - Debian's docker.io, podman, runc, runsc (gVisor), docker-registry, busybox-static;
#   - dockerd (no bridge, no iptables, vfs storage) with runsc registered as a runtime,
#     started in the background with its own pidfile and log;
#   - a local registry on 127.0.0.1:5000 (config written to a state directory);
#   - a tiny busybox-static image (FROM scratch + /bin/busybox + its applet links), pushed
#     to the local registry, pulled back by digest into both engines;
#   - the pinned reference written to $CORDON_CI_STATE/image-ref (default
#     /var/lib/cordon-ci/image-ref), which tests/integration/test-containers reads.
#
# Usage: .ci/engines.sh [setup|start-dockerd|stop-dockerd|stop]   (default: setup)
# The container tests stop and restart dockerd through this script (daemon-failure paths).
set -euo pipefail

STATE=${CORDON_CI_STATE:-/var/lib/cordon-ci}
REGISTRY_ADDR=127.0.0.1:5000
REPO=localhost:5000/cordon-busybox
DOCKER_SOCK=/var/run/docker.sock
PACKAGES=(docker.io podman runc runsc docker-registry busybox-static)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export DEBIAN_FRONTEND=noninteractive

log() { printf 'engines: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Reads a pidfile and says whether that process is alive.
pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

install_packages() {
	local missing=()
	for p in "${PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ "${#missing[@]}" -eq 0 ] && return 0
	log "installing ${missing[*]}"
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Podman reaches the local registry over plain HTTP (docker allows localhost by default).
configure_podman_registry() {
	local f=/etc/containers/registries.conf.d/50-cordon-ci.conf
	mkdir -p "$(dirname "$f")"
	[ -f "$f" ] && return 0
	cat >"$f" <<-EOF
		# Written by cordon's .ci/engines.sh: the CI registry on loopback, plain HTTP.
		[[registry]]
		location = "localhost:5000"
		insecure = true
	EOF
}

docker_up() { docker --host "unix://$DOCKER_SOCK" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

# runsc is registered with --oci-seccomp (the seccomp profile also applies to the work
# inside gVisor's kernel, as under runc) and --network=none (gVisor's own netstack stays
# off: the container tier denies egress, and runsc refuses docker's netns here anyway).
# runsc-uds is the same runsc with --host-uds=open as well: the sandbox may connect to a
# host unix socket visible in its mounts, which cordon's governed egress and services use
# (the agent's relay, docs/network.md); a second name, so that runsc stays as it was.
write_daemon_json() {
	local runsc; runsc=$(command -v runsc)
	cat >"$STATE/docker/daemon.json" <<-EOF
		{"runtimes": {"runsc": {"path": "$runsc", "runtimeArgs": ["--oci-seccomp", "--network=none"]},
		 "runsc-uds": {"path": "$runsc", "runtimeArgs": ["--oci-seccomp", "--network=none", "--host-uds=open"]}}}
	EOF
}

# A running dockerd started from an older daemon.json gets runsc-uds without a restart:
# the daemon reloads its runtimes on SIGHUP (its containers keep running).
reload_dockerd_runtimes() {
	docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc-uds"' && return 0
	pid_alive "$STATE/dockerd.pid" || return 0
	write_daemon_json
	log "reloading dockerd's runtimes (runsc-uds)"
	kill -HUP "$(cat "$STATE/dockerd.pid")"
	for _ in $(seq 1 40); do
		docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc-uds"' && return 0
		sleep 0.25
	done
	die "dockerd did not take runsc-uds"
}

start_dockerd() {
	docker_up && { reload_dockerd_runtimes; return 0; }
	mkdir -p "$STATE/docker"
	write_daemon_json
	log "starting dockerd (log: $STATE/dockerd.log)"
	# setsid: dockerd must not belong to the caller's process group or session (a test
	# runner killing its group must not take the daemon down with it).
	setsid dockerd --host "unix://$DOCKER_SOCK" --bridge=none --iptables=false \
		--ip6tables=false --ip-masq=false --storage-driver=vfs \
		--config-file "$STATE/docker/daemon.json" --pidfile "$STATE/dockerd.pid" \
		</dev/null >>"$STATE/dockerd.log" 2>&1 &
	for _ in $(seq 1 120); do
		docker_up && { log "dockerd is up"; return 0; }
		sleep 0.5
	done
	tail -n 30 "$STATE/dockerd.log" >&2 || true
	die "dockerd did not answer within 60 s"
}

stop_dockerd() {
	pid_alive "$STATE/dockerd.pid" || return 0
	local pid; pid=$(cat "$STATE/dockerd.pid")
	log "stopping dockerd ($pid)"
	kill "$pid"
	for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
	die "dockerd ($pid) did not stop"
}

# busybox's wget: curl is not on a fresh host, busybox-static is one of ours.
http_ok() { busybox wget -q -O /dev/null "$@" 2>/dev/null; }
registry_up() { http_ok "http://$REGISTRY_ADDR/v2/"; }

start_registry() {
	registry_up && return 0
	mkdir -p "$STATE/registry/data"
	cat >"$STATE/registry/config.yml" <<-EOF
		version: 0.1
		log: {level: warn}
		storage: {filesystem: {rootdirectory: $STATE/registry/data}, delete: {enabled: true}}
		http: {addr: $REGISTRY_ADDR}
	EOF
	log "starting docker-registry on $REGISTRY_ADDR"
	setsid docker-registry serve "$STATE/registry/config.yml" \
		</dev/null >>"$STATE/registry.log" 2>&1 &
	echo $! >"$STATE/registry.pid"
	for _ in $(seq 1 60); do registry_up && return 0; sleep 0.25; done
	die "docker-registry did not answer on $REGISTRY_ADDR"
}

stop_registry() {
	pid_alive "$STATE/registry.pid" && kill "$(cat "$STATE/registry.pid")" || true
}

# True when the recorded pinned image is present in both engines and in the registry.
image_ready() {
	[ -s "$STATE/image-ref" ] || return 1
	local ref digest; ref=$(cat "$STATE/image-ref"); digest=${ref#*@}
	podman image exists "$ref" 2>/dev/null &&
		docker image inspect "$ref" >/dev/null 2>&1 &&
		http_ok --header 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
			"http://$REGISTRY_ADDR/v2/cordon-busybox/manifests/$digest"
}

build_rootfs() {
	local root=$1
	[ -x /bin/busybox ] || die "busybox-static is not installed"
	mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/work" "$root/proc" "$root/sys" \
		"$root/dev" "$root/.cordon"
	cp /bin/busybox "$root/bin/busybox"
	local a
	for a in $("$root/bin/busybox" --list); do
		[ "$a" = busybox ] || ln -sf busybox "$root/bin/$a"
	done
	printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' \
		>"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	chmod 1777 "$root/tmp"
}

build_and_push_image() {
	local tmp; tmp=$(mktemp -d)
	build_rootfs "$tmp/rootfs"
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$tmp/rootfs" \
		-cf "$tmp/rootfs.tar" .
	log "building $REPO:ci"
	podman import -q --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' \
		"$tmp/rootfs.tar" "$REPO:ci" >/dev/null
	podman push -q --format v2s2 --digestfile "$tmp/digest" "$REPO:ci" >/dev/null
	local digest; digest=$(cat "$tmp/digest")
	rm -rf "$tmp"
	[[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || die "podman push gave no digest"
	local ref="$REPO@$digest"
	# Both engines pull by digest: the engine verifies the bytes against the pin.
	podman pull -q "$ref" >/dev/null
	docker pull -q "$ref" >/dev/null
	# And docker pushes too (proves its registry path), under a tag of its own.
	docker tag "$ref" "$REPO:docker-ci"
	docker push -q "$REPO:docker-ci" >/dev/null
	echo "$ref" >"$STATE/image-ref.tmp"
	mv "$STATE/image-ref.tmp" "$STATE/image-ref"
	log "pinned $ref"
}

setup() {
	[ "$(id -u)" -eq 0 ] || die "run as root (it installs packages and starts dockerd)"
	mkdir -p "$STATE"
	chmod 0755 "$STATE"
	install_packages
	configure_podman_registry
	start_dockerd
	start_registry
	image_ready || build_and_push_image
	log "ready: $(cat "$STATE/image-ref")"
}

case "${1:-setup}" in
setup) setup ;;
start-dockerd) start_dockerd ;;
stop-dockerd) stop_dockerd ;;
stop) stop_dockerd; stop_registry ;;
*) die "usage: $0 [setup|start-dockerd|stop-dockerd|stop]" ;;
esac
