import HearSystem
import Testing
