// swift-tools-version: 6.1
import PackageDescription

/// `make run` builds the debug configuration: a first run compiles the dependencies unoptimized, in about half the
/// release build's time. The two modules that touch every pixel (the synthetic cameras, scaling, the picture cells) are
/// optimized in it all the same: unoptimized, the demo call kept 1.66 cores busy, with them about half a core (release
/// build: 0.28; `make bench-first-run`).
/// `make build`, `make test` and `make install` build release, where every module is optimized.
let optimizedInDebug: [SwiftSetting] = [.unsafeFlags(["-O"], .when(configuration: .debug))]

/// Parley: video calls in the terminal. See README.md for the module map.
let package = Package(
    name: "Parley",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "parley", targets: ["parley"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", exact: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", exact: "2.4.1"),
    ],
    targets: [
        // System libraries, found through pkg-config.
        .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        .systemLibrary(name: "CVPX", pkgConfig: "vpx", providers: [.apt(["libvpx-dev"])]),
        .systemLibrary(name: "CNcursesw", pkgConfig: "ncursesw", providers: [.apt(["libncurses-dev"])]),
        .systemLibrary(name: "CPortAudio", pkgConfig: "portaudio-2.0", providers: [.apt(["portaudio19-dev"])]),
        // libpulse: no pkg-config (its flags are ones SwiftPM refuses and warns about); headers sit in /usr/include.
        .systemLibrary(name: "CPulse", providers: [.apt(["libpulse-dev"])]),
        .systemLibrary(name: "CSpeexDSP", pkgConfig: "speexdsp", providers: [.apt(["libspeexdsp-dev"])]),
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(name: "CVTerm", pkgConfig: "vterm", providers: [.apt(["libvterm-dev"])]),
        .systemLibrary(name: "CSRTP", pkgConfig: "libsrtp2", providers: [.apt(["libsrtp2-dev"])]),

        // One small C shim per library, for exactly what Swift cannot call (macros, varargs, C globals).
        .target(name: "COpusShim", dependencies: ["COpus"]),
        .target(name: "CVPXShim", dependencies: ["CVPX"]),
        .target(name: "CCursesShim", dependencies: ["CNcursesw"]),
        .target(name: "CVTermShim", dependencies: ["CVTerm"]),
        // ALSA's error handler is variadic: the shim keeps ALSA from printing over the call screen.
        .target(
            name: "CAudioShim", dependencies: ["CPortAudio"],
            linkerSettings: [.linkedLibrary("asound", .when(platforms: [.linux]))]),
        // V4L2 ioctls are variadic.
        .target(name: "CV4L2Shim"),
        // OpenSSL's DTLS over memory BIOs, for the browsers' DTLS-SRTP (what Swift cannot call: SSL_CTX_ctrl macros).
        .target(name: "CDTLSShim", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        // libwebm's muxer is C++ (and Debian ships only its parser's headers): a C face over mkvmuxer for recording.
        .target(
            name: "CWebMShim", exclude: ["libwebm/LICENSE.TXT"], cxxSettings: [.headerSearchPath("libwebm")],
            linkerSettings: [.linkedLibrary("webm"), .linkedLibrary("stdc++")]),

        // Media engine: frames, Opus and VP8 codecs, sources and sinks (Y4M, WAV, synthetic camera and voice).
        .target(
            name: "ParleyMedia", dependencies: ["COpus", "COpusShim", "CVPX", "CVPXShim", "CSpeexDSP", "CWebMShim"],
            swiftSettings: optimizedInDebug),
        // Real devices: microphones and speakers through PortAudio, cameras through V4L2 (MJPEG via libturbojpeg).
        .target(
            name: "ParleyDevices",
            dependencies: [
                "ParleyMedia", "CPortAudio", "CAudioShim", "CTurboJPEG", "CV4L2Shim",
                .target(name: "CPulse", condition: .when(platforms: [.linux])),
            ]
        ),
        // Pure room core: sessions, reducer, layout, chat log, command table.
        .target(
            name: "ParleyRoom",
            dependencies: [.product(name: "DequeModule", package: "swift-collections")]
        ),
        // Security, with no UI or socket code: SFrame (RFC 9605) media and chat encryption, room keys and safety
        // codes, room passwords (HMAC challenge and response), relay certificates and their pinning.
        // Bytes as text: the one hex pair the wire formats, the security code and the relay share, with no dependency.
        .target(name: "ParleyBytes"),
        .target(
            name: "ParleySecurity",
            dependencies: [
                "ParleyBytes",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // Messages between calls, stored: accounts bound to their keys, direct messages (sealed), delivery state.
        // `MessageStore` is the protocol; SQLite (GRDB, WAL) is the embedded implementation.
        .target(
            name: "ParleyStore",
            dependencies: ["ParleySecurity", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        // What the relays of a cluster tell each other: `ClusterEvent`s in versioned batches on the bus, and the relay's
        // view of the cluster (`ClusterBus`, `RoomPlacer`, node load). No database and no sockets: the PostgreSQL
        // cluster carries the batches, the relay reads and writes the events.
        .target(name: "ParleyBus", dependencies: ["ParleyStore"]),
        // The same `MessageStore` on a PostgreSQL server shared by several relays (issue 29), through postgres-nio:
        // versioned migrations under an advisory lock, connection URLs.
        .target(
            name: "ParleyPostgres",
            dependencies: [
                "ParleyStore", "ParleyBus", "ParleySecurity",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Wire formats: RTP/RTCP, VP8 and Opus payloads, signaling messages, jitter buffer, the name rules that the
        // relay and the client share.
        .target(name: "ParleyWire", dependencies: ["ParleyBytes"]),
        // Browsers in a room (issue 53), in small owners: the SDP model, ICE-lite (STUN in, STUN out), one DTLS
        // context (OpenSSL) and one SRTP session (libsrtp2) per browser.
        .target(
            name: "ParleyWebRTC",
            dependencies: [
                "ParleyBytes", "ParleyWire", "CDTLSShim", "CSRTP", .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // A shared terminal (issue 52): the sharer's emulator (libvterm) over the program's output, read as cells.
        .target(name: "ParleyShare", dependencies: ["CVTermShim", "ParleyWire"]),
        // The relay server (SFU): WebSocket signaling and RTP forwarding over UDP, and the operators' `/metrics` and
        // `/healthz` on their own `--admin` socket (Prometheus text through swift-prometheus).
        .target(
            name: "ParleyRelay",
            dependencies: [
                "ParleyBytes", "ParleyWire", "ParleySecurity", "ParleyStore", "ParleyBus", "ParleyWebRTC",
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // Client-side call engine: signaling client, packetizer, jitter buffer, codecs, per-peer sinks.
        .target(
            name: "ParleyEngine",
            dependencies: [
                "ParleyMedia", "ParleyRoom", "ParleyBytes", "ParleyWire", "ParleyDevices", "ParleySecurity",
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Terminal front end: pure screen rendering plus the one type that calls ncurses.
        // Pictures for a terminal: video drawn in character cells (blocks, quadrants, sextants, braille) and as
        // sixel or kitty graphics. No terminal here: the TUI writes what these encode.
        .target(name: "ParleyPictures", dependencies: ["ParleyMedia", "ParleyRoom"], swiftSettings: optimizedInDebug),
        .target(
            name: "ParleyTUI",
            dependencies: [
                "ParleyMedia", "ParleyRoom", "ParleyPictures", "ParleyEngine", "ParleySecurity", "ParleyWire",
                "CNcursesw", "CCursesShim",
            ]),
        // Benchmarks behind `make bench`: each compares Parley with a reference tool in the same run. Not linked into
        // the `parley` binary: `parley-bench` runs them and starts the `parley` binary it is given.
        .target(
            name: "ParleyBench",
            dependencies: [
                "ParleyMedia", "ParleyRoom", "ParleyWire", "ParleyRelay", "ParleyEngine", "ParleyTUI", "ParleyPictures",
                "COpus", "COpusShim", "CVPX", "ParleyProcesses", "ParleySecurity", "ParleyDevices", "ParleyTestSupport",
                "ParleyShare",
                // The join client's one event loop (it drives ParleyEngine's SignalingConnection).
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // `parley-bench [suite]`, what `make bench` runs (a developer's tool, beside the product as redis-benchmark is).
        .executableTarget(
            name: "parley-bench",
            dependencies: ["ParleyBench", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // Pictures and helpers that tests, test probes and benchmarks share: probe pictures, a cluster of relays in one
        // process (not linked into `parley`).
        .target(
            name: "ParleyTestSupport",
            dependencies: [
                "ParleyEngine", "ParleyMedia", "ParleyRelay", "ParleyRoom", "ParleySecurity", "ParleyStore",
                "ParleyBus", "ParleyWire", "ParleyProcesses",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // The lab's Chromium calls: their signaling and statistics server.
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]),
        // Hidden test helper, not a product: draws a known screen through `Terminal` inside tmux for ParleyTUITests,
        // and runs the in-pane half of RenderBench (`pane`).
        .executableTarget(
            name: "parley-tui-probe",
            dependencies: [
                "ParleyTUI", "ParleyPictures", "ParleyMedia", "ParleyRoom", "ParleyBench", "ParleyTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Hidden test helper, not a product: runs a microphone or speaker (or a camera) in a child process with its own
        // environment (sound server, ALSA configuration) for ParleyDevicesTests.
        .executableTarget(
            name: "parley-device-probe",
            dependencies: [
                "ParleyDevices", "ParleyMedia", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // The `parley` command: join, serve, demo, bot, messaging. No benchmark code (that is `parley-bench`).
        .executableTarget(
            name: "parley",
            dependencies: [
                "ParleyMedia", "ParleyRoom", "ParleyWire", "ParleyRelay", "ParleyEngine", "ParleyTUI", "ParleyPictures",
                "ParleySecurity", "ParleyStore", "ParleyBus", "ParleyPostgres", "ParleyShare",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Running real programs for tests and benchmarks: spawning, background processes, tmux panes.
        .target(name: "ParleyProcesses"),
        // Lanes of a test run: which suites may run beside which in one `swift test` (tests only; imports Testing).
        .target(name: "ParleyTestLanes"),
        .testTarget(name: "ParleyTestLanesTests", dependencies: ["ParleyTestLanes"]),
        // What `make fuzz` drives through the parsers; `make test` replays the corpus through the same functions.
        .target(name: "ParleyFuzzTargets", dependencies: ["ParleyWire", "ParleyMedia", "ParleyWebRTC"]),
        .testTarget(name: "ParleyFuzzTests", dependencies: ["ParleyFuzzTargets"]),

        .testTarget(name: "ParleyMediaTests", dependencies: ["ParleyTestLanes", "ParleyMedia"]),
        .testTarget(
            name: "ParleyDevicesTests",
            dependencies: ["ParleyTestLanes", "ParleyDevices", "ParleyMedia", "ParleyProcesses"],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "ParleyEngineTests",
            dependencies: ["ParleyTestLanes", "ParleyEngine", "ParleyMedia", "ParleyRoom", "ParleyWire", "ParleyBytes"]
        ),
        .testTarget(name: "ParleyRoomTests", dependencies: ["ParleyRoom"]),
        .testTarget(
            name: "ParleyStoreTests",
            dependencies: [
                "ParleyTestLanes",
                "ParleyStore", "ParleySecurity", "ParleyPostgres", "ParleyProcesses",
                .product(name: "GRDB", package: "GRDB.swift"),
                // A certificate authority and a server certificate for the TLS tests of the PostgreSQL store.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "ParleyWireTests", dependencies: ["ParleyWire", "ParleyBytes"]),
        .testTarget(name: "ParleyShareTests", dependencies: ["ParleyShare", "ParleyWire"]),
        .testTarget(
            name: "ParleyWebRTCTests",
            dependencies: [
                "ParleyWebRTC", "ParleyBytes", "ParleyWire", "ParleyProcesses", "ParleyTestLanes",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            // The transport test's page, read through #filePath.
            exclude: ["Fixtures"]),
        .testTarget(name: "ParleyBusTests", dependencies: ["ParleyBus", "ParleyStore"]),
        .testTarget(
            name: "ParleySecurityTests",
            dependencies: [
                "ParleySecurity",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            exclude: ["Vectors"]),
        .testTarget(
            name: "ParleyRelayTests",
            dependencies: [
                "ParleyTestLanes",
                "ParleyRelay", "ParleyWire", "ParleyBytes", "ParleyEngine", "ParleyMedia", "ParleyRoom",
                "ParleyDevices", "ParleyShare",
                "ParleySecurity", "ParleyStore", "ParleyBus", "ParleyTestSupport", "ParleyProcesses",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "ParleyTUITests",
            dependencies: [
                "ParleyTestLanes",
                "ParleyTUI", "ParleyPictures", "ParleyMedia", "ParleyRoom", "ParleyEngine", "ParleyProcesses",
                "ParleyTestSupport",
                "ParleyWire", "ParleySecurity",
            ],
            // Golden screens are read through #filePath, not bundled as resources.
            exclude: ["Screens/Golden"]
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["ParleyTestLanes", "ParleyProcesses", "ParleyMedia", "ParleyEngine", "ParleyTestSupport"],
            exclude: ["Golden"]),
        .testTarget(
            name: "ParleyBenchTests",
            dependencies: [
                "ParleyTestLanes",
                "ParleyBench", "ParleyPictures", "ParleyRoom", "ParleyRelay", "ParleyWire", "ParleyProcesses",
                .product(name: "Logging", package: "swift-log"),
            ]),
    ]
)
