#!/bin/sh
# A Java runtime with just the modules YCSB and the project's MongoDB binding use (jdeps over
# their jars), so the YCSB image needs no JRE from apt (no Debian package pin to break). The
# image build runs this in the Maven stage; hack/tests/test_image_install.py runs it too.

#
#   jlink-jre.sh YCSB-HOME OUTPUT     YCSB-HOME holds lib/*.jar (hack/build-java.sh's target/ycsb)
set -eu
home=$1
out=$2
# Modules the code reaches only by name at run time (jdeps cannot see them): DNS SRV lookups
# for mongodb+srv URIs (jdk.naming.dns), TLS elliptic curves (jdk.crypto.ec), SCRAM (sasl).
runtime_modules=jdk.naming.dns,jdk.crypto.ec,java.security.sasl,jdk.zipfs
modules=$(jdeps --ignore-missing-deps --multi-release 17 --print-module-deps \
  --class-path "$home/lib/*" "$home"/lib/*.jar)
rm -rf "$out"
jlink --add-modules "$modules,$runtime_modules" --strip-debug --no-man-pages --no-header-files \
  --compress=2 --output "$out"
