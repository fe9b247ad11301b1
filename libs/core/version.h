// The version of this build: VERSION, then the commits since the repository
// began and the commit ("0.1.0-412-g25f456c"), "-dirty" for a build of
// changed sources; VERSION alone outside a git checkout. Baked at build
// time by libs/core/version.cmake; image tags and `--version` use it.
#pragma once

namespace omniforge::core {

const char* Version();

}  // namespace omniforge::core
