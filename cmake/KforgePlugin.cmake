# kforge_add_plugin(<name> SOURCES <files...> [LIBRARIES <targets...>] [NO_INSTALL])
#
# Builds lib<name>.so as a loadable kforge plugin: a MODULE library against kforge::sdk
# with hidden symbols (only the entry point is exported). In the kforge source tree it is
# plugins/<folder>/'s, named kforge_<folder>, lands in the build tree's plugin directory,
# where the runtime finds it, and installs beside the bundled plugins; out of tree it installs into ${CMAKE_INSTALL_LIBDIR}/kforge/plugins
# of the consuming project's prefix (point KFORGE_PLUGIN_PATH there). NO_INSTALL builds it
# for tests only.
include_guard(GLOBAL)
include(GNUInstallDirs)

function(kforge_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "kforge_add_plugin(${name}): SOURCES is required")
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE kforge::sdk ${ARG_LIBRARIES})
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(DEFINED KFORGE_BUILD_PLUGIN_DIR)
    # A bundled plugin is named after its folder, plugins/<folder>/ -> kforge_<folder>: the
    # runtime then holds its name and its kinds' prefix to that name (registry.cpp).
    get_filename_component(folder "${CMAKE_CURRENT_SOURCE_DIR}" NAME)
    if(NOT name STREQUAL "kforge_${folder}")
      message(FATAL_ERROR "kforge_add_plugin(${name}) in plugins/${folder}/: a bundled plugin is named "
                          "kforge_${folder}, after its folder (and its kinds ${folder}.<name>)")
    endif()
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${KFORGE_BUILD_PLUGIN_DIR}")
    set(destination "${KFORGE_INSTALL_PLUGIN_DIR}")
  else()
    set(destination "${CMAKE_INSTALL_LIBDIR}/kforge/plugins")
  endif()
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${name} LIBRARY DESTINATION "${destination}")
  endif()
endfunction()
