// Small file and text helpers the command-line tests share: read a whole file, write one, look
// for a substring in a program's output.
#ifndef CNUAS_TEST_TEXT_FILES_H
#define CNUAS_TEST_TEXT_FILES_H

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

/// The whole file, or "" when it cannot be read.
inline std::string
ReadFile(const std::filesystem::path& p)
{
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline void
WriteFile(const std::filesystem::path& p, const std::string& text)
{
    std::ofstream(p) << text;
}

inline bool
Contains(const std::string& haystack, const std::string& needle)
{
    return haystack.find(needle) != std::string::npos;
}

#endif
