/// A 5x7 bitmap font for labels drawn into pictures (participant names, frame counters).
/// Covers A–Z (lower case drawn as upper case), 0–9 and a little punctuation; anything else draws as '?'.
public enum PixelFont {
    /// Glyph width and height in font pixels; characters advance by `width + 1`.
    static let width = 5
    static let height = 7

    /// One row mask per glyph row, bit 4 = leftmost column.
    static func rows(for character: Character) -> [UInt8] {
        let key = Character(character.uppercased())
        return glyphs[key] ?? glyphs["?"]!
    }

    /// The rows of a character's glyph (bit 4 the leftmost column), for drawing text into a picture elsewhere.
    public static func glyph(_ character: Character) -> [UInt8] { rows(for: character) }

    /// Width in font pixels of a line of text, including spacing.
    static func advance(of text: String) -> Int { text.count * (width + 1) - 1 }

    private static let glyphs: [Character: [UInt8]] = {
        var table: [Character: [UInt8]] = [:]
        for (character, picture) in pictures {
            let lines = picture.split(separator: " ")
            precondition(lines.count == height, "glyph \(character) needs \(height) rows")
            table[character] = lines.map { line in
                line.reduce(UInt8(0)) { ($0 << 1) | ($1 == "#" ? 1 : 0) }
            }
        }
        return table
    }()

    // Each glyph is seven space-separated rows of five cells.
    private static let pictures: [Character: String] = [
        "A": ".###. #...# #...# ##### #...# #...# #...#",
        "B": "####. #...# #...# ####. #...# #...# ####.",
        "C": ".###. #...# #.... #.... #.... #...# .###.",
        "D": "####. #...# #...# #...# #...# #...# ####.",
        "E": "##### #.... #.... ####. #.... #.... #####",
        "F": "##### #.... #.... ####. #.... #.... #....",
        "G": ".###. #...# #.... #.### #...# #...# .####",
        "H": "#...# #...# #...# ##### #...# #...# #...#",
        "I": ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
        "J": "..### ...#. ...#. ...#. ...#. #..#. .##..",
        "K": "#...# #..#. #.#.. ##... #.#.. #..#. #...#",
        "L": "#.... #.... #.... #.... #.... #.... #####",
        "M": "#...# ##.## #.#.# #.#.# #...# #...# #...#",
        "N": "#...# #...# ##..# #.#.# #..## #...# #...#",
        "O": ".###. #...# #...# #...# #...# #...# .###.",
        "P": "####. #...# #...# ####. #.... #.... #....",
        "Q": ".###. #...# #...# #...# #.#.# #..#. .##.#",
        "R": "####. #...# #...# ####. #.#.. #..#. #...#",
        "S": ".#### #.... #.... .###. ....# ....# ####.",
        "T": "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
        "U": "#...# #...# #...# #...# #...# #...# .###.",
        "V": "#...# #...# #...# #...# #...# .#.#. ..#..",
        "W": "#...# #...# #...# #.#.# #.#.# #.#.# .#.#.",
        "X": "#...# #...# .#.#. ..#.. .#.#. #...# #...#",
        "Y": "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#..",
        "Z": "##### ....# ...#. ..#.. .#... #.... #####",
        "0": ".###. #...# #..## #.#.# ##..# #...# .###.",
        "1": "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",
        "2": ".###. #...# ....# ...#. ..#.. .#... #####",
        "3": "##### ...#. ..#.. ...#. ....# #...# .###.",
        "4": "...#. ..##. .#.#. #..#. ##### ...#. ...#.",
        "5": "##### #.... ####. ....# ....# #...# .###.",
        "6": "..##. .#... #.... ####. #...# #...# .###.",
        "7": "##### ....# ...#. ..#.. .#... .#... .#...",
        "8": ".###. #...# #...# .###. #...# #...# .###.",
        "9": ".###. #...# #...# .#### ....# ...#. .##..",
        " ": "..... ..... ..... ..... ..... ..... .....",
        "-": "..... ..... ..... ##### ..... ..... .....",
        "_": "..... ..... ..... ..... ..... ..... #####",
        ".": "..... ..... ..... ..... ..... ..... ..#..",
        ",": "..... ..... ..... ..... ..... ..#.. .#...",
        ":": "..... ..#.. ..... ..... ..... ..#.. .....",
        "#": ".#.#. .#.#. ##### .#.#. ##### .#.#. .#.#.",
        "?": ".###. #...# ....# ...#. ..#.. ..... ..#..",
        "!": "..#.. ..#.. ..#.. ..#.. ..#.. ..... ..#..",
        "'": "..#.. ..#.. ..... ..... ..... ..... .....",
        "/": "....# ....# ...#. ..#.. .#... #.... #....",
    ]
}
