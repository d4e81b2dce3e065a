// Small file and text helpers the tests share: read a whole file (as text or bytes), write one,
// run a shell command for its output, look for a substring in a program's output.
#ifndef CNUAS_TEST_TEXT_FILES_H
#define CNUAS_TEST_TEXT_FILES_H

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

/// The whole file, or "" when it cannot be read.
inline std::string
ReadFile(const std::filesystem::path& p)
{
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// The whole file as bytes, or none when it cannot be read.
inline std::vector<uint8_t>
ReadBytes(const std::filesystem::path& p)
{
    std::ifstream in(p, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void
WriteFile(const std::filesystem::path& p, const std::string& text)
{
    std::ofstream(p) << text;
}

/// Runs `cmd` with the shell, its standard output into `out` and pclose's wait status into
/// `waitStatus`; false (and -1) when the shell could not be started.
inline bool
ShellRun(const std::string& cmd, std::string& out, int& waitStatus)
{
    out.clear();
    waitStatus = -1;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr)
    {
        return false;
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
    {
        out.append(buf, n);
    }
    waitStatus = pclose(p);
    return true;
}

inline bool
Contains(const std::string& haystack, const std::string& needle)
{
    return haystack.find(needle) != std::string::npos;
}

#endif
