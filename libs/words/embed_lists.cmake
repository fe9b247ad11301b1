# Generates a .cc holding the word lists (data/<name>.txt) so that no binary
# reads them from disk at run time.
# Invoked in script mode: -DDATA_DIR=... -DOUT=...
file(GLOB files "${DATA_DIR}/*.txt")
list(SORT files)
set(body "")
foreach(f IN LISTS files)
  get_filename_component(name "${f}" NAME_WE)
  file(READ "${f}" text)
  string(APPEND body "      {\"${name}\", R\"omniforge_words(${text})omniforge_words\"},\n")
endforeach()
file(WRITE "${OUT}.tmp" "// Generated from ${DATA_DIR}; do not edit.\n#include \"libs/words/embedded_lists.h\"\n\nnamespace omniforge::words::internal {\n\nconst std::vector<EmbeddedList>& EmbeddedLists() {\n  static const std::vector<EmbeddedList> lists = {\n${body}  };\n  return lists;\n}\n\n}  // namespace omniforge::words::internal\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
