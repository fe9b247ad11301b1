// Force-included ahead of everything else in each C++ file of a
// ThreadSanitizer build (CMakeLists.txt, OMNIFORGE_TSAN; docs/tests.md,
// "ThreadSanitizer"). protobuf's map_field.h gives MapFieldBase two more
// members when __SANITIZE_THREAD__ is defined, which -fsanitize=thread
// does; Debian's libprotobuf is built without TSan, so code compiled with
// TSan and the library disagreed on the layout of every map field
// (google.protobuf.Struct's among them): the TSan-built conversation
// service wrote past its response (gRPC's "byte_count_ < total_size_"
// assertion) and a map insert crashed. Included here first with the macro
// hidden, map_field.h keeps the library's layout; its include guard keeps
// it so for the rest of the file. Nothing else in protobuf's headers looks
// at the macro (it only derives PROTOBUF_TSAN, which no header uses).
#pragma once

#pragma push_macro("__SANITIZE_THREAD__")
#undef __SANITIZE_THREAD__
#include <google/protobuf/map_field.h>
#pragma pop_macro("__SANITIZE_THREAD__")
