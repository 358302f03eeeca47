# Sourced by scripts/build-openmpi5.sh and scripts/build-ucx-cuda.sh (bash).
#
# private_apt DIR LINE ARRAY: an apt configuration of its own in folder DIR
# with the one sources line LINE (the system's apt is neither read nor
# changed, so no root is needed to fetch); its apt-get/apt-cache options go
# into the array named ARRAY, and its package lists are fetched.
private_apt() {
  local dir=$1 line=$2
  local -n opts=$3
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/etc/sources.list.d" "$dir/etc/preferences.d"
  echo "$line" >"$dir/etc/sources.list"
  opts=(-o "Dir::Etc::SourceList=$dir/etc/sources.list" -o "Dir::Etc::SourceParts=$dir/etc/sources.list.d"
        -o "Dir::Etc::Preferences=$dir/etc/preferences" -o "Dir::Etc::PreferencesParts=$dir/etc/preferences.d"
        -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" -o "Debug::NoLocking=1"
        -o "APT::Sandbox::User=$(id -un)")
  apt-get "${opts[@]}" update -qq >&2
}
