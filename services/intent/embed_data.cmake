# Generates a .cc holding the labeled utterances (data/utterances/<label>.txt)
# so the service binary needs no data files at run time.
# Invoked in script mode: -DDATA_DIR=... -DOUT=...
file(GLOB files "${DATA_DIR}/*.txt")
list(SORT files)
set(body "")
foreach(f IN LISTS files)
  get_filename_component(label "${f}" NAME_WE)
  file(READ "${f}" lines)
  string(APPEND body "      {\"${label}\", R\"omniforge_data(${lines})omniforge_data\"},\n")
endforeach()
file(WRITE "${OUT}.tmp" "// Generated from ${DATA_DIR}; do not edit.\n#include <vector>\n\nnamespace omniforge::intent {\n\nstruct EmbeddedLabelFile {\n  const char* label;\n  const char* lines;\n};\n\nconst std::vector<EmbeddedLabelFile>& EmbeddedLabelFiles() {\n  static const std::vector<EmbeddedLabelFile> files = {\n${body}  };\n  return files;\n}\n\n}  // namespace omniforge::intent\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
