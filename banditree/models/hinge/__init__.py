"""Random hinge trees and ferns."""
